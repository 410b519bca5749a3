"""Command-line entry points: stc-opt, stc-import (and stc-run)."""
