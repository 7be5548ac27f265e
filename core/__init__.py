"""The foundations every layer stands on: the one ``Registry`` type, the one
error hierarchy and the plugins' entry-point group. Nothing here imports
anything else of lengthbench."""
