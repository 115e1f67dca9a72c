"""``python -m exports``: an entry point.  It needs the vote store, so the command itself lives in
``annotate.export_cli`` (entry points stand above the layers; see docs/architecture.md)."""

import sys

from annotate.export_cli import main

if __name__ == "__main__":
    sys.exit(main())
