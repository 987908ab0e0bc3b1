"""Run the command line: ``python -m hybrid_retrievers``."""

from hybrid_retrievers.cli import main

raise SystemExit(main())
