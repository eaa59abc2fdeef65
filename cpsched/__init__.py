"""cpsched: exact scheduling of DNN computation graphs onto heterogeneous devices."""

__version__ = "0.1.0"
