"""lengthbench's exact match for text harnesses: the ``utils.py`` of an lm-eval pack written by `lengthbench export`.

``lengthbench export --lm-eval`` copies this file as it is beside the pack's task YAMLs (it imports nothing of
lengthbench's, so the pack runs where only lm-evaluation-harness is installed), and its ``answer_right`` is
written into the Inspect task file; ``benchmark.harness_packs`` writes both.

The harness scores the answer's tokens, teacher-forced: an example is right when every answer position's argmax
is the answer's token. For a generated answer that is: the completion's first tokens (symbols, split on
whitespace) equal the answer's at its scored positions. What the completion holds past the answer is not
scored (nor is ``<eos>`` after it), and one that stops early misses the answer's remaining tokens, exactly as
``lengthbench score`` compares a prediction.
"""

from pathlib import Path


def answer_right(completion: str, answer: str, scored=None) -> bool:
    """Whether ``completion`` (generated text) holds ``answer`` (the answer's symbols, space-separated) at the
    scored positions (``scored``: indices into the answer's tokens; None: all of them)."""
    written, expected = completion.split(), answer.split()
    positions = range(len(expected)) if scored is None else scored
    return all(i < len(written) and written[i] == expected[i] for i in positions)


def process_results(doc: dict, results: list) -> dict:
    """lm-eval's per-document metrics: exact match, overall and at the document's task length."""
    right = float(answer_right(results[0], doc["answer"], doc.get("scored")))
    return {"exact_match": right, f"exact_match_length_{doc['length']}": right}


def load_test_split(config: str, **_metadata) -> dict:
    """lm-eval's dataset: the config ``config`` of the exported dataset this pack sits in (its parent folder),
    wherever the export was moved."""
    import datasets

    return datasets.load_dataset(str(Path(__file__).resolve().parent.parent), config)
