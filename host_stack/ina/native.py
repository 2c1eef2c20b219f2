"""The host stack's C extension (host_stack/ina/_batchio.c), or a clear error saying how to
build it: there is no silent slow path, the transport and the injector need it."""

try:
    from host_stack.ina import _batchio
except ImportError as exc:
    raise ImportError(
        "host_stack.ina._batchio (the INA transport's batched UDP I/O, C) is not built: run "
        "./dev.sh setup, or .venv/bin/python setup.py build_ext --inplace") from exc

__all__ = ["_batchio"]
