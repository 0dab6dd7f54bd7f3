"""Where rows are kept: the row schema, the results store, file safety, the user cache and data folder, run
logs. `zoo.store` is this package; the store's names (ResultStore, load_frame, ...) load on first use."""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "store": ["BadLine", "LOCK_FILE", "PREDICTED_FILE", "ResultStore", "StoreWriteError", "latest", "load_frame"]})
