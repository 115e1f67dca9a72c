"""Writers for every output format, shared by the app's downloads and ``python -m exports``."""
