"""``hf-llama``, ``hf-gpt-neox``, ``hf-bloom``: Hugging Face ``transformers``
architectures trained by the harness like any family.

Each builds the ``transformers`` model class itself (``LlamaForCausalLM``,
``GPTNeoXForCausalLM``, ``BloomForCausalLM``) from a config made at the
preset's shape, with that architecture's own position handling, so a cell
asks whether a Llama-, GPT-NeoX- or BLOOM-style block generalizes in length
as lengthbench's transformer does:

* ``hf-llama``: pre-RMSNorm blocks, rotary embedding on every head dimension
  (theta 10000), SwiGLU MLP, no biases, untied head. The SwiGLU MLP is
  ``round(2 d_ff / 3)`` wide: the LLaMA paper's rule that gives it the
  parameters of a ``d_ff``-wide two-matrix MLP.
* ``hf-gpt-neox``: parallel attention and MLP residuals, rotary embedding on
  a quarter of each head's dimensions (the architecture's default, as in
  Pythia), GELU MLP ``d_ff`` wide, biases, untied head.
* ``hf-bloom``: ALiBi biases (no position embedding), a LayerNorm after the
  word embedding, GELU MLP. Where ours differs from BLOOM: the MLP is
  ``d_ff`` wide (BLOOM's is fixed at 4 d_model; the same at ``quick``,
  ``full`` and ``horizon``), its two layers replaced after the model is built
  and initialized by BLOOM's own rule; the head is untied from the embedding,
  as the transformer's is (tied, the model has 20% fewer parameters than the
  transformer on index hints' 527-token vocabulary).

The harness's shape maps onto each config as ``d_model`` → hidden size,
``n_layers`` → layers, ``n_heads`` → heads (no grouped keys), dropout 0; the
vocabulary is the task's (ids 0..3 ``<pad> <bos> <sep> <eos>``). At the same
shape each is within 2% of the transformer's parameters on every task of
``full`` (tested against ``MATCH_TOLERANCE``), so a preset gives them the
transformer's shape, no width matching needed. The weights are drawn by
``transformers``' own initialization from torch's default stream, which the
harness seeds per run. FLOPs are counted as the transformer's (the same
matrix products at matched shapes). ``transformers`` is the ``hf`` extra;
without it the families are listed but building one says how to install it.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from lengthbench.core.errors import InputError, install_hint
from lengthbench.models.families import ModelSize, RunModel, register_family
from lengthbench.models.transformer import transformer_flops

MAX_POSITIONS = 1 << 16  # the configs' position limit: rotary and ALiBi are computed per length, far past any test


def _transformers():
    try:
        import transformers
    except ImportError:
        raise InputError(f"the hf-* model families build Hugging Face transformers models: {install_hint('hf')}") \
            from None
    return transformers


def llama(vocab_size: int, size: ModelSize):
    hf = _transformers()
    config = hf.LlamaConfig(vocab_size=vocab_size, hidden_size=size.d_model, num_hidden_layers=size.n_layers,
                            num_attention_heads=size.n_heads, num_key_value_heads=size.n_heads,
                            intermediate_size=round(2 * size.d_ff / 3), max_position_embeddings=MAX_POSITIONS,
                            attention_dropout=0.0, tie_word_embeddings=False, **_special_tokens())
    return hf.LlamaForCausalLM(config)


def gpt_neox(vocab_size: int, size: ModelSize):
    hf = _transformers()
    config = hf.GPTNeoXConfig(vocab_size=vocab_size, hidden_size=size.d_model, num_hidden_layers=size.n_layers,
                              num_attention_heads=size.n_heads, intermediate_size=size.d_ff,
                              max_position_embeddings=MAX_POSITIONS, hidden_dropout=0.0, attention_dropout=0.0,
                              tie_word_embeddings=False, **_special_tokens())
    return hf.GPTNeoXForCausalLM(config)


def bloom(vocab_size: int, size: ModelSize):
    hf = _transformers()
    config = hf.BloomConfig(vocab_size=vocab_size, hidden_size=size.d_model, n_layer=size.n_layers,
                            n_head=size.n_heads, hidden_dropout=0.0, attention_dropout=0.0, tie_word_embeddings=False,
                            **_special_tokens())
    model = hf.BloomForCausalLM(config)
    for block in model.transformer.h:  # the MLP d_ff wide, initialized as BLOOM initializes its linear layers
        block.mlp.dense_h_to_4h = nn.Linear(size.d_model, size.d_ff)
        block.mlp.dense_4h_to_h = nn.Linear(size.d_ff, size.d_model)
        for layer in (block.mlp.dense_h_to_4h, block.mlp.dense_4h_to_h):
            model._init_weights(layer)
    return model


def _special_tokens() -> dict:
    return {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 3}


class HuggingFaceModel(RunModel):
    """A ``transformers`` causal LM as one run's model: token ids in, its
    ``.logits`` out; it places tokens itself (positions 0..T-1, the default)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor, positions=None) -> torch.Tensor:
        return self.model(input_ids=tokens, use_cache=False).logits


ARCHITECTURES = {
    "hf-llama": (llama, "Llama-style block from Hugging Face transformers (LlamaForCausalLM): rotary embedding, "
                        "RMSNorm, SwiGLU MLP 2/3 d_ff wide"),
    "hf-gpt-neox": (gpt_neox, "GPT-NeoX-style block from Hugging Face transformers (GPTNeoXForCausalLM): rotary "
                              "embedding on a quarter of each head, parallel residual, GELU MLP"),
    "hf-bloom": (bloom, "BLOOM-style block from Hugging Face transformers (BloomForCausalLM): ALiBi, embedding "
                        "LayerNorm, GELU MLP d_ff wide"),
}


def _register(name: str, make, description: str, rank: float) -> None:
    def build(vocab_size: int, size: ModelSize) -> HuggingFaceModel:
        return HuggingFaceModel(make(vocab_size, size))

    register_family(name, rank=rank, flops=transformer_flops, requires=("transformers",), extra="hf",
                    description=f"{description}; d_model wide, n_layers deep, n_heads heads (the hf extra)")(build)


# their rows last of the built-ins, in ARCHITECTURES' order
for _place, (_name, (_make, _description)) in enumerate(ARCHITECTURES.items()):
    _register(_name, _make, _description, rank=120 + 10 * _place)


def load_saved_model(path) -> torch.nn.Module:
    """A causal LM that ``save_pretrained`` wrote to the folder ``path``,
    loaded with ``AutoModelForCausalLM.from_pretrained`` from local files only
    (nothing is downloaded), in evaluation mode; refused by path when it is
    not such a folder or ``transformers`` cannot load it."""
    folder = Path(path)
    if not (folder / "config.json").is_file():
        why = "no such folder" if not folder.exists() else "not a folder" if not folder.is_dir() else "no config.json"
        raise InputError(f"saved model {str(path)!r} is not a saved model folder ({why}); give the folder a transformers "
                         "model's save_pretrained wrote (config.json and its weights)")
    hf = _transformers()
    hf.utils.logging.disable_progress_bar()  # one table out, not a loading bar per shard
    verbosity = hf.utils.logging.get_verbosity()
    hf.utils.logging.set_verbosity_error()  # our one line says what is wrong, not transformers' report of it
    try:
        model = hf.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    except Exception as err:  # noqa: BLE001  (transformers and its readers raise many kinds: each one is refused)
        raise InputError(f"saved model {str(path)!r}: {_unloadable(err)}") from None
    finally:
        hf.utils.logging.set_verbosity(verbosity)
    return model.eval()


def _unloadable(err: Exception) -> str:
    """Why a saved model folder did not load, in one line: weights that do not fit the config, weights that
    cannot be read (truncated, empty, not weights), or what transformers said."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else type(err).__name__
    if "mismatched_sizes" in text or "size mismatch" in text:
        return "its weights do not fit its config.json (their shapes differ); save the model and its config together"
    if type(err).__name__ in ("SafetensorError", "UnpicklingError", "EOFError", "HeaderTooLarge"):
        return f"its weights cannot be read ({first}): the file is truncated, empty or not a weights file"
    return f"transformers cannot load it as a causal LM ({first})"
