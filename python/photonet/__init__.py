"""photonet: a fast, reproducible, packet-level simulator for optically switched
datacenter networks (Sirius, NegotiaToR, Mordia/TMS, REACToR, Baldur) and their
electrical baselines.

    >>> import photonet
    >>> r = photonet.run({"fabric": "esn", "workload": {"load": 0.5}, "stop": {"flows": 2000}})
    >>> r.summary["goodput"], r.fct("<100KB", "p99_us"), r.fct_table()
    >>> df = photonet.sweep("examples/esn_paper.toml", {"workload.load": [0.2, 0.5]}, jobs=2)
"""
from ._core import SimulationError, __version__
from .api import FabricInfo, Result, default_config, fabric_names, fabrics, run
from .config import ConfigError


def __getattr__(name: str):
    # Imported on first use, so `import photonet` (and the CLI) stays free of pandas.
    # `photonet.sweep` is the sweep module, callable: photonet.sweep(config, grid, jobs=...) -> DataFrame.
    if name == "sweep":
        import importlib

        return importlib.import_module(".sweep", __name__)
    if name == "collect":
        from .analysis import collect

        return collect
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["run", "sweep", "collect", "Result", "ConfigError", "SimulationError", "default_config", "fabrics", "fabric_names", "FabricInfo",
           "__version__"]
