"""The foundations every layer stands on: the one ``Registry`` type and the one
error hierarchy. Nothing here imports anything else of lengthbench."""
