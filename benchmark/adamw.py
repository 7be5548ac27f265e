"""AdamW for the trainer: PyTorch's fused AdamW kernel, called directly.

``torch.optim`` imports ``torch._dynamo`` the first time an optimizer is
built (its methods are wrapped to keep the compiler out), which cost every
process that trains about 2-3 s on a 2-core CPU: each grid worker, each
``lengthbench run``, each test that trains in a subprocess. This class makes
the same update with the same kernel (``torch._fused_adamw_``, as
``torch.optim.AdamW(fused=True)`` calls it: a per-parameter step count
incremented before the update, state created at a parameter's first
gradient, parameters without a gradient skipped), so a run's numbers are
bit-identical to those of ``torch.optim.AdamW(..., fused=True)`` (a test
holds this), and its ``state_dict`` has ``torch.optim``'s layout, so a
checkpoint written by either loads in the other.
"""

from __future__ import annotations

import torch

BETAS = (0.9, 0.999)
EPS = 1e-8


class FusedAdamW:
    """AdamW over ``params`` (decoupled weight decay, no amsgrad), one fused
    kernel call per step; ``lr`` may be changed between steps."""

    def __init__(self, params, lr: float, weight_decay: float):
        self.params = list(params)
        self.lr, self.weight_decay = lr, weight_decay
        self.state: dict[int, dict[str, torch.Tensor]] = {}  # by index in params

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not live:
            return
        for i in live:
            if i not in self.state:
                p = self.params[i]
                self.state[i] = {"step": torch.tensor(0.0, dtype=torch.float32, device=p.device),
                                 "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                                 "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format)}
        states = [self.state[i] for i in live]
        steps = [s["step"] for s in states]
        torch._foreach_add_(steps, 1)
        torch._fused_adamw_([self.params[i] for i in live], [self.params[i].grad for i in live],
                            [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states], [], steps,
                            amsgrad=False, lr=self.lr, beta1=BETAS[0], beta2=BETAS[1],
                            weight_decay=self.weight_decay, eps=EPS, maximize=False)

    def state_dict(self) -> dict:
        """``torch.optim.AdamW``'s layout: per-parameter state by index, and one parameter group."""
        group = {"lr": self.lr, "betas": BETAS, "eps": EPS, "weight_decay": self.weight_decay, "amsgrad": False,
                 "maximize": False, "foreach": None, "capturable": False, "differentiable": False, "fused": True,
                 "decoupled_weight_decay": True, "params": list(range(len(self.params)))}
        return {"state": {i: dict(s) for i, s in self.state.items()}, "param_groups": [group]}

    def load_state_dict(self, saved: dict) -> None:
        """The state of a ``state_dict`` (ours or ``torch.optim``'s); refuses one of another shape."""
        state = {}
        for key, entry in saved["state"].items():
            i = int(key)
            p = self.params[i]
            if entry["exp_avg"].shape != p.shape or entry["exp_avg_sq"].shape != p.shape:
                raise ValueError(f"optimizer state {i} has shape {tuple(entry['exp_avg'].shape)}, "
                                 f"the parameter {tuple(p.shape)}")
            state[i] = {"step": entry["step"].to(torch.float32).to(p.device).reshape(()),
                        "exp_avg": entry["exp_avg"].to(p), "exp_avg_sq": entry["exp_avg_sq"].to(p)}
        self.state = state
