"""The words zoo.compare and zoo.select share, defined once: output formats, timing backends, compile modes,
optimizers, and the one parser of --pretraining and of --weights (zoo.models.accuracy's, as the Python API takes them too)."""
from .models.accuracy import pretraining_option, weights_option

FORMATS = ("table", "markdown", "csv", "json")              # zoo.compare's stdout
SELECT_FORMATS = tuple(f for f in FORMATS if f != "csv")    # zoo.select's: a shortlist with its reasons is no CSV
BACKENDS = ("eager", "onnxruntime")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
OPTIMIZERS = ("sgd", "adamw")       # whose fp32 state a training step's memory counts (zoo.runs.counted)

__all__ = ["BACKENDS", "COMPILE_MODES", "FORMATS", "OPTIMIZERS", "SELECT_FORMATS", "pretraining_option", "weights_option"]
