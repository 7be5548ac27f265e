"""Published findings of the founding papers, as data, each with its source.

Only what could be sourced is here; where a paper's per-task table could not
be sourced, the reproduction reports say so instead of guessing. The numbers
are the papers' (or their authors' released results), never ours.
"""

from __future__ import annotations

SOLVED = 0.9  # Deletang et al.: a task is "solved" at a score >= 90%

DELETANG = "Deletang et al. 2023 (ICLR), Neural Networks and the Chomsky Hierarchy"
RUOSS = "Ruoss et al. 2023 (ACL), Randomized Positional Encodings Boost Length Generalization of Transformers"
KAZEMNEJAD = "Kazemnejad et al. 2023 (NeurIPS), The Impact of Positional Encoding on Length Generalization"
CHO = "Cho et al. 2024 (NeurIPS), Position Coupling"
JELASSI = "Jelassi et al. 2024 (ICML), Repeat After Me: Transformers are Better than State Space Models at Copying"

# Deletang et al.'s transformer (best of five encodings, max over 10 seeds x 3 learning rates; per-token
# accuracy averaged over test lengths 41..500): a number where the paper's text gives one, else the verdict.
TRANSFORMER_FINDINGS = {
    "even_pairs": ("solved", None),
    "bucket_sort": ("solved", None),
    "cycle_navigation": ("not solved", 0.619),
}
TRANSFORMER_DEFAULT = ("not solved", None)  # "fails every other task, including parity_check"
# A maintainer of the reference code: mean over seeds on even_pairs, against the reported maximum.
EVEN_PAIRS_SEED_MEAN = (0.677, 0.152)

# Recurrent baselines: what the paper states per architecture (hidden size 256; the table could not be
# sourced, so other cells are "not sourced").
RECURRENT_FINDINGS = {
    ("rnn", "R"): "solved (every seed)",
    ("lstm", "R"): "solved (every seed)",
    ("stack-rnn", "R"): "solved (every seed)",
    ("lstm", "bucket_sort"): "solved (almost perfectly)",
    ("stack-rnn", "solve_equation"): "not solved",
    ("tape-rnn", "R"): "solved (every seed)",
    ("tape-rnn", "binary_multiplication"): "not solved",
    ("tape-rnn", "compute_sqrt"): "not solved",
}

RANDOMIZED_GAIN = 0.120  # Ruoss et al., abstract: mean test accuracy +12.0 points over tasks and encodings

# Kazemnejad et al.: mean reciprocal rank over their tasks, and 3-seed mean exact match over lengths
# 1..2L from the authors' released results.
NOPE_MRR = {"nope": 0.69, "t5": 0.55, "alibi": 0.50, "rope": 0.33, "sinusoidal": 0.22}
NOPE_EXACT_MATCH = {
    "copy": {"nope": 0.986, "t5": 0.771, "alibi": 0.289, "rope": 0.000, "sinusoidal": 0.000},
    "reverse_string": {"nope": 0.230, "t5": 0.242, "alibi": 0.171, "rope": 0.077, "sinusoidal": 0.023},
}

# Cho et al.: trained on 1..30-digit additions, > 95% exact match up to 200 digits (median of 8 runs);
# N x 2 multiplication (trained 1..40) is shown in figures only.
COUPLING_ADDITION = "> 95% exact match up to 200 digits (6.7x the training length), median of 8 runs"
COUPLING_MULTIPLICATION = "figures only (no number in the text)"

# Jelassi et al., abstract: "transformers outperform GSSMs in terms of efficiency and generalization on
# synthetic tasks that require copying the context" (GSSMs: state-space models with a fixed-size state).
COPYING_CLAIM = "transformers generalize better than state-space models on tasks that copy the context"

ZHOU = "Zhou et al. 2024, Transformers Can Achieve Length Generalization But Not Robustly"
ANIL = "Anil et al. 2022 (NeurIPS), Exploring Length Generalization in Large Language Models"
HOU = "Hou et al. 2024, Universal Length Generalization with Turing Programs"
FAN = "Fan et al. 2025 (ICLR), Looped Transformers for Length Generalization"

# Zhou et al.: the combination, not each part alone; their best of 10 trials.
FORMATS_ADDITION_CLAIM = ("FIRE with randomized positions, reversed answers and index hints: addition trained to 40 "
                          "digits reaches > 98% exact match at 100 digits (2.5x), the best of 10 trials, strongly "
                          "seed-dependent")
# Anil et al.'s models are pretrained language models prompted in context; Hou et al. qualify the claim.
SCRATCHPAD_CLAIM = ('scratchpad prompting "results in a dramatic improvement in length generalization" (Anil et al.); '
                    'later work finds it "not always helpful" and that its format "highly impacts" the result '
                    '(Hou et al.)')
LOOPED_CLAIM = ('looped transformers with an adaptive number of steps "significantly improve length generalization" '
                "over fixed-depth ones on tasks with a known iterative solution (parity, copy and addition among them)")

GRAZZI = "Grazzi et al. 2025 (ICLR), Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues"
# The abstract and Figure 1's caption; the per-task table could not be sourced here.
NEGATIVE_CLAIM = ("extending the eigenvalue range of the state transition from [0, 1] to [-1, 1] lets DeltaNet and "
                  "Mamba solve parity (from random guessing to a perfect score) and \"consistently improves their "
                  "performance on state-tracking tasks\" such as modular counting")
MERRILL = 'Merrill et al. 2024 (ICML), "The Illusion of State in State-Space Models"'
LIU_AUTOMATA = 'Liu et al. 2023 (ICLR), "Transformers Learn Shortcuts to Automata"'
LIU_FLIPFLOP = 'Liu et al. 2023 (NeurIPS), "Exposing Attention Glitches with Flip-Flop Language Modeling"'
STATE_CLAIM = ("the word problem of S5 (non-solvable: NC1-complete) cannot be solved at arbitrary length by "
               "transformers or diagonal state-space models of fixed depth, which nonlinear RNNs solve; solvable "
               "groups have constant-depth shortcuts (their figures only: no number in the text)")
FLIPFLOP_CLAIM = ("transformers make rare, sporadic errors on flip-flop strings, more as the strings grow sparse and "
                  "long; a 1-layer LSTM makes none")
ZOO_CLAIM = ("No published claim compares these mechanisms with static encodings on these algorithmic tasks "
             "(their papers measure language modelling, retrieval and state tracking): this is the board's finding")

# Each paper's horizon and budget (REFERENCES: the papers' protocol sections), set beside ours in every report.
PAPER_PROTOCOLS = {
    "chomsky": "Deletang et al.: train 1..40, test 41..500 (12.5x), 1,000,000 steps of 128 for every model, a "
               "5-block d 64 encoder, the max over 10 seeds x 3 learning rates; Ruoss et al.: the same horizon "
               "(their budget could not be sourced)",
    "nope": "Kazemnejad et al.: train to 20, test to 40 (2x), a ~107M-parameter decoder, 40k steps of 64, lr 3e-5, "
            "3 seeds",
    "coupling": "Cho et al.: addition trained on 1..30 digits, tested to 200 (6.7x), a 1-layer d 512 decoder, 50k "
                "steps of 1000 (1M examples), lr 1e-4, medians of 8 runs; N x 2 multiplication trained on 1..40",
    "copying": "Jelassi et al.: their training lengths and budget could not be sourced here",
    "negative": "Grazzi et al.: trained on lengths up to 40, tested on 40..256 (6.4x), 3 seeds (Figure 1's caption); "
                "their budget could not be sourced here",
    "state": "Merrill et al. and Liu et al. (automata): fixed lengths, the depth a model needs measured, not length "
             "generalization; Liu et al. (flip-flop): strings of 512 tokens, the sparseness of reads varied",
}
