"""photonet: a fast, reproducible, packet-level simulator for optically switched
datacenter networks (Sirius, NegotiaToR, Mordia/TMS, REACToR, Baldur) and their
electrical baselines.

    >>> import photonet
    >>> r = photonet.run({"fabric": "esn", "workload": {"load": 0.5}, "stop": {"flows": 2000}})
    >>> r.summary["goodput"], r.fct("<100KB", "p99_us")
"""
from ._core import __version__
from .api import FabricInfo, Result, default_config, fabric_names, fabrics, run
from .config import ConfigError

__all__ = ["run", "Result", "ConfigError", "default_config", "fabrics", "fabric_names", "FabricInfo", "__version__"]
