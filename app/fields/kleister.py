"""The Kleister NDA field definitions (the dataset's four keys), shipped as the starting set
for NDA collections and used by ``bench.fields``."""

from cairn.app.fields.types import FieldSpec, FieldType, Multiplicity

KLEISTER_NDA_FIELDS = (
    FieldSpec("effective_date", FieldType.DATE, "the date the agreement is effective, dated or made as of"),
    FieldSpec("jurisdiction", FieldType.TEXT, "the state or country whose laws govern the agreement (governing law)"),
    FieldSpec("party", FieldType.TEXT, "a party to the agreement: a company or a person", Multiplicity.MANY),
    FieldSpec("term", FieldType.DURATION, "how long the agreement or its confidentiality obligations last (term)"),
)
