"""llama.cpp as a peer of Pare's decoders (docs/llm.md, "Peers").

The project venv's side writes a Llama-architecture model of models/llm
(_llm.Decoder, arch "llama") to a GGUF file with the `gguf` package, its
linear weights as F32, Q8_0 or Q4_0 (llama.cpp's own quantizers, as
`gguf.quants` implements them), the embedding and norms F32, a placeholder
vocabulary of the model's size. llama.cpp runs in another venv that has
`llama-cpp-python` (it builds llama.cpp from source: `make llama-cpp` makes
.venv-llama-cpp; LLAMA_CPP_VENV names another), in a child process speaking
one line per request:

    python -m tools.bench.llama_cpp_peer --worker MODEL.gguf THREADS

(tools/bench/line_worker.py), so its rounds interleave with Pare's (tools/bench/llm_weights.py). The
worker imports only the standard library, numpy and llama_cpp.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from tools.bench.line_worker import REPO, LineWorker

VENV = Path(os.environ.get("LLAMA_CPP_VENV", REPO / ".venv-llama-cpp"))
FORMATS = ("F32", "Q8_0", "Q4_0")


def write_gguf(model, path: Path, fmt: str) -> Path:
    """`model` (_llm.Decoder, arch "llama", float weights) as a GGUF file of
    llama.cpp's "llama" architecture, the linears in `fmt` (F32, Q8_0 or
    Q4_0). The model's RoPE rotates interleaved pairs, as llama.cpp's
    "llama" does, so the q and k weights go as they are."""
    import gguf
    import numpy as np

    c = model.config
    if c.arch != "llama":
        raise ValueError(f"llama.cpp's peer takes the llama architecture, not {c.arch!r}")
    qtype = {"F32": gguf.GGMLQuantizationType.F32, "Q8_0": gguf.GGMLQuantizationType.Q8_0}.get(
        fmt, gguf.GGMLQuantizationType.Q4_0
    )
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("pare-" + fmt.lower())
    w.add_context_length(c.max_seq)
    w.add_embedding_length(c.dim)
    w.add_block_count(c.layers)
    w.add_feed_forward_length(c.hidden)
    w.add_head_count(c.heads)
    w.add_head_count_kv(c.kv_heads)
    w.add_rope_dimension_count(c.dim // c.heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(model.norm.eps)
    w.add_file_type({"F32": 0, "Q8_0": 7, "Q4_0": 2}[fmt])
    # A placeholder SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then plain ones.
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    tokens += [f"t{i}" for i in range(len(tokens), c.vocab)]
    types = [2, 3, 3, *([6] * 256), *([1] * (c.vocab - 259))]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * c.vocab)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def f32(name, t):
        w.add_tensor(name, t.detach().float().numpy().astype(np.float32))

    def linear(name, t):
        data = t.detach().float().numpy().astype(np.float32)
        if fmt == "F32":
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    f32("token_embd.weight", model.embedding.weight)
    for i, b in enumerate(model.blocks):
        f32(f"blk.{i}.attn_norm.weight", b.norm1.weight)
        linear(f"blk.{i}.attn_q.weight", b.attention.wq.weight)
        linear(f"blk.{i}.attn_k.weight", b.attention.wk.weight)
        linear(f"blk.{i}.attn_v.weight", b.attention.wv.weight)
        linear(f"blk.{i}.attn_output.weight", b.attention.wo.weight)
        f32(f"blk.{i}.ffn_norm.weight", b.norm2.weight)
        linear(f"blk.{i}.ffn_gate.weight", b.mlp.w1.weight)
        linear(f"blk.{i}.ffn_up.weight", b.mlp.w3.weight)
        linear(f"blk.{i}.ffn_down.weight", b.mlp.w2.weight)
    f32("output_norm.weight", model.norm.weight)
    linear("output.weight", model.output.weight)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


class LlamaCppPeer(LineWorker):
    """A worker process running one GGUF model on llama.cpp."""

    def __init__(self, gguf_path: Path, threads: int = 1):
        python = VENV / "bin" / "python"
        if not python.exists():
            raise FileNotFoundError(
                f"{python}: no llama.cpp venv: run `make llama-cpp` (it builds llama.cpp, about 15 minutes), "
                "or set LLAMA_CPP_VENV to a venv with llama-cpp-python"
            )
        super().__init__(
            python, "tools.bench.llama_cpp_peer", [str(gguf_path), str(threads)], f"the llama.cpp worker ({gguf_path})"
        )


def _worker(gguf_path: str, threads: int) -> int:
    import llama_cpp
    import numpy as np

    llm = llama_cpp.Llama(
        model_path=gguf_path,
        n_ctx=256,
        n_batch=256,
        n_ubatch=256,
        n_threads=threads,
        n_threads_batch=threads,
        logits_all=False,
        verbose=False,
    )
    vocab = llm.n_vocab()

    def last_token() -> int:
        # The last position's logits (Llama.scores stays zero without logits_all, which
        # would compute the output projection for every prompt token).
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(vocab,))
        return int(np.argmax(logits))

    print("ready", flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(req["prompt"])
        tokens = [last_token()]
        t1 = time.perf_counter()
        for _ in range(req["steps"] - 1):  # as pare.generate: the last token is picked, not fed
            llm.eval([tokens[-1]])
            tokens.append(last_token())
        t2 = time.perf_counter()
        print(json.dumps({"tokens": tokens, "prefill_seconds": t1 - t0, "decode_seconds": t2 - t1}), flush=True)
    return 0


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--worker":
    sys.exit(_worker(sys.argv[2], int(sys.argv[3])))
