"""``python -m batchsched``: the same command line as ``batchsched``."""

from batchsched.cli import main

raise SystemExit(main())
