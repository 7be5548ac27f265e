"""The recurrent baselines of the Chomsky-hierarchy benchmark (Deletang et
al. 2023): ``rnn`` (Elman), ``lstm``, ``stack-rnn`` (Joulin & Mikolov
2015, as in the reference code: a vanilla RNN that reads the top of a
differentiable stack and writes it by a softmax over push / pop / no-op) and
``tape-rnn`` (the reference's tape RNN with input-length jumps: a vanilla RNN
that reads the cell under its head, writes it, then moves the head by a
softmax over stay / left / right / jump left / jump right by the input length).

One ``Recurrent`` module is one run's network: an embedding, the cell's
input and recurrent projections (``nn.Linear``), its stack or tape
projections, and the head.

Differences from the reference, chosen to fit our decoder-only framing:
the network reads ``BOS input SEP output`` token by token, teacher-forced,
and predicts each next token (the reference reads the input, then emits the
output from "empty" steps); tokens enter through a learned embedding (not a
one-hot vector); the hidden size is the preset's ``d_model`` (the paper:
256) and there is one recurrent layer. The stack has 8-wide cells (as in
the paper) and as many cells as the sequence has tokens, so it can never
overflow (the paper: 128 cells in training); positions are not used. The
tape is circular with 2T+2 cells of 8, so no move can wrap onto a written cell
(the paper: 256 in training), and its value is written by a linear map (the
reference: an MLP). Its jump length is the input length, known once SEP is
read; before that, the input read so far (the reference knows it from the
start, which a causal reader of ``BOS input SEP`` cannot).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from lengthbench.models.families import ModelSize, RunModel, register_family
from lengthbench.tasks.base import SEP

GATES = {"rnn": 1, "lstm": 4, "stack-rnn": 1, "tape-rnn": 1}  # pre-activation blocks per hidden unit
STACK_CELL = 8
STACK_ACTIONS = 3  # push, pop, no-op
TAPE_CELL = 8
TAPE_ACTIONS = 5  # write, then: stay, left, right, jump left, jump right (by the input length)
LSTM_FORGET_BIAS = 1.0  # added to the forget gate's pre-activation, as Haiku's LSTM does


def update_stack(stack: torch.Tensor, actions: torch.Tensor, push: torch.Tensor) -> torch.Tensor:
    """Joulin & Mikolov's soft stack step. ``stack (..., D, C)`` (cell 0 is
    the top), ``actions (..., 3)`` probabilities of push / pop / no-op,
    ``push (..., C)``: each cell becomes the mix of where push, pop and no-op
    would have put the stack."""
    a_push, a_pop, a_noop = (actions[..., i, None, None] for i in range(STACK_ACTIONS))
    pushed = torch.cat([push.unsqueeze(-2), stack[..., :-1, :]], dim=-2)
    popped = torch.cat([stack[..., 1:, :], torch.zeros_like(stack[..., :1, :])], dim=-2)
    return a_push * pushed + a_pop * popped + a_noop * stack


def update_tape(tape: torch.Tensor, actions: torch.Tensor, write: torch.Tensor, jump: torch.Tensor) -> torch.Tensor:
    """The reference's tape step. ``tape (..., M, C)`` is circular with cell 0
    under the head; ``write (..., C)`` replaces cell 0, then the head moves by
    ``actions (..., 5)``, probabilities of stay / left / right / jump left /
    jump right, ``jump (...)`` cells for a jump: moving left by s puts cell s
    under the head (new cell m = old cell m + s), moving right by s cell -s."""
    written = torch.cat([write.unsqueeze(-2), tape[..., 1:, :]], dim=-2)
    cells = torch.arange(tape.shape[-2], device=tape.device)
    shifts = torch.stack([torch.zeros_like(jump), torch.ones_like(jump), -torch.ones_like(jump), jump, -jump], dim=-1)
    source = (cells + shifts[..., None]) % tape.shape[-2]  # (..., 5, M): old cell of each new cell
    moved = torch.gather(written.unsqueeze(-3).expand(*source.shape, tape.shape[-1]), -2,
                         source[..., None].expand(*source.shape, tape.shape[-1]))
    return (actions[..., None, None] * moved).sum(dim=-3)


def input_lengths(tokens: torch.Tensor) -> torch.Tensor:
    """Per step, the input length as a causal reader knows it: the tokens
    between BOS and SEP once SEP is read, else the input tokens read so far."""
    steps = torch.arange(tokens.shape[-1], device=tokens.device)
    is_sep = tokens == SEP
    sep_at = torch.where(is_sep.any(-1), is_sep.to(torch.int64).argmax(-1), tokens.shape[-1])
    return torch.minimum(steps, sep_at[..., None] - 1)


class Recurrent(RunModel):
    """``forward(tokens (B, T), positions) -> logits (B, T, V)``; positions are ignored."""

    def __init__(self, cell: str, vocab_size: int, size: ModelSize):
        super().__init__()
        if cell not in GATES:
            raise ValueError(f"unknown recurrent cell {cell!r}; valid: {', '.join(GATES)}")
        hidden = size.d_model
        self.cell, self.hidden = cell, hidden
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.input = nn.Linear(hidden, GATES[cell] * hidden)
        self.recurrent = nn.Linear(hidden, GATES[cell] * hidden, bias=False)
        if cell == "stack-rnn":
            self.memory_read = nn.Linear(STACK_CELL, hidden, bias=False)
            self.push = nn.Linear(hidden, STACK_CELL)
            self.action = nn.Linear(hidden, STACK_ACTIONS)
        if cell == "tape-rnn":
            self.memory_read = nn.Linear(TAPE_CELL, hidden, bias=False)
            self.write = nn.Linear(hidden, TAPE_CELL)
            self.action = nn.Linear(hidden, TAPE_ACTIONS)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, tokens: torch.Tensor, positions=None) -> torch.Tensor:
        b, t = tokens.shape
        inputs = self.input(self.embedding(tokens))  # every step's input projection in one matmul
        h = inputs.new_zeros(b, self.hidden)
        c = torch.zeros_like(h)
        stack = inputs.new_zeros(b, t + 1, STACK_CELL) if self.cell == "stack-rnn" else None
        tape = inputs.new_zeros(b, 2 * t + 2, TAPE_CELL) if self.cell == "tape-rnn" else None
        jumps = input_lengths(tokens) if tape is not None else None
        states = []
        for step in range(t):
            pre = inputs[:, step] + self.recurrent(h)
            if stack is not None:
                pre = pre + self.memory_read(stack[:, 0])
            if tape is not None:
                pre = pre + self.memory_read(tape[:, 0])
            if self.cell == "lstm":
                i, f, g, o = pre.chunk(4, dim=-1)
                c = torch.sigmoid(f + LSTM_FORGET_BIAS) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
            else:
                h = torch.tanh(pre)
            if stack is not None:
                stack = update_stack(stack, torch.softmax(self.action(h), dim=-1), self.push(h))
            if tape is not None:
                tape = update_tape(tape, torch.softmax(self.action(h), dim=-1), self.write(h), jumps[:, step])
            states.append(h)
        return self.head(torch.stack(states, dim=1))


def recurrent_flops(cell: str, token_lengths, size: ModelSize, vocab: int) -> float:
    """Forward FLOPs of sequences of the given token lengths: per token the
    input and recurrent projections and the stack's or tape's read, write and
    action projections (a multiply-add is 2), and its update, where every
    value of every cell mixes the k = 3 (stack) or 5 (tape) moves: k
    multiplies and k - 1 adds; then the head."""
    n = np.asarray(token_lengths, dtype=float)
    d = size.d_model
    per_token = 2 * 2 * d * GATES[cell] * d
    if cell == "stack-rnn":  # n + 1 cells
        per_token += 2 * (2 * STACK_CELL * d + STACK_ACTIONS * d) + (2 * STACK_ACTIONS - 1) * STACK_CELL * (n + 1)
    if cell == "tape-rnn":  # 2n + 2 cells
        per_token += 2 * (2 * TAPE_CELL * d + TAPE_ACTIONS * d) + (2 * TAPE_ACTIONS - 1) * TAPE_CELL * (2 * n + 2)
    return float((n * per_token + 2 * n * d * vocab).sum())


def _register(cell: str, description: str, rank: float) -> None:
    def build(vocab_size: int, size: ModelSize) -> Recurrent:
        return Recurrent(cell, vocab_size, size)

    def flops(token_lengths, size: ModelSize, vocab: int) -> float:
        return recurrent_flops(cell, token_lengths, size, vocab)

    register_family(cell, description=description, flops=flops, size_fields=("d_model",), rank=rank)(build)


_register("rnn", "Elman RNN (tanh), hidden size d_model (Deletang et al.'s RNN)", rank=30)
_register("lstm", "LSTM, hidden size d_model (Deletang et al.'s LSTM)", rank=40)
_register("stack-rnn", "RNN with a differentiable stack of 8-wide cells (Joulin & Mikolov; Deletang et al.)", rank=50)
_register("tape-rnn", "RNN with a differentiable circular tape of 8-wide cells and input-length jumps "
                      "(Deletang et al.)", rank=60)
