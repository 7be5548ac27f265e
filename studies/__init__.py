"""The studies: one module per question the benchmark answers with a grid
(``studies.base``: the ``Study`` contract and the ``STUDIES`` registry).

Each module registers its presets and its ``Study``: ``horizon`` (protocol
v2's reference) and the views and reproductions built on it or on ``full``:
``chomsky``, ``nope``, ``coupling``, ``copying`` (the founding papers),
``formats``, ``looped``, and the 2025-26 ``zoo`` with its three views
``negative``, ``state`` and ``mechanisms``. The core layers name no paper and
no study: this package is installed as the ``lengthbench.presets`` entry point
(``setup.cfg``), which ``benchmark.presets.PRESETS`` loads the first time it
is asked for a preset it does not hold.
"""

# Each registers its presets and its study, in the order `list presets` and `list studies` show them.
from lengthbench.studies import horizon  # noqa: F401
from lengthbench.studies import chomsky  # noqa: F401
from lengthbench.studies import nope  # noqa: F401
from lengthbench.studies import coupling  # noqa: F401
from lengthbench.studies import copying  # noqa: F401
from lengthbench.studies import formats  # noqa: F401
from lengthbench.studies import looped  # noqa: F401
from lengthbench.studies import zoo  # noqa: F401
from lengthbench.studies import negative  # noqa: F401
from lengthbench.studies import state  # noqa: F401
from lengthbench.studies import mechanisms  # noqa: F401
from lengthbench.studies import fit  # noqa: F401
from lengthbench.studies import recall  # noqa: F401
from lengthbench.studies import recognition  # noqa: F401
from lengthbench.studies.base import STUDIES, Study, register_study

__all__ = ["STUDIES", "Study", "register_study"]
