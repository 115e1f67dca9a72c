"""DST metrics, agreement, correlation and calibration: pure functions, no UI, no database."""

__version__ = "0.1.0"
