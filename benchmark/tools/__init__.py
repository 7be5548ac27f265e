"""Tools around the run path, each a command or a measurement a maintainer runs
by hand (``python -m lengthbench.benchmark.tools.NAME``): step times (``perf``,
``perf_against``, ``bench_generation``), the planner's check (``plan_check``),
bias saturation (``saturation``), a protocol's budget from its pilot
(``budget``) and parameter matching of families (``matching``). The run path
(the rest of ``benchmark/``) imports none of them (import-linter's contract)."""
