"""Learned fields (SPEC §5): typed values extracted from documents, each with a citation.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from app.fields.finders import find_candidates, text_key, verify_span
from app.fields.kleister import KLEISTER_NDA_FIELDS
from app.fields.ranker import DocFeatures, FieldModel, Ranker, doc_features, f1, train, train_field
from app.fields.types import Candidate, Extracted, FieldSpec, FieldType, Multiplicity

__all__ = [
    "KLEISTER_NDA_FIELDS",
    "Candidate",
    "DocFeatures",
    "Extracted",
    "FieldModel",
    "FieldSpec",
    "FieldType",
    "Multiplicity",
    "Ranker",
    "doc_features",
    "f1",
    "find_candidates",
    "text_key",
    "train",
    "train_field",
    "verify_span",
]
