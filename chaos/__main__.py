"""`python -m chaos [--short] [--seed N] ...`: run the chaos day and exit 1 on any mismatch."""

from __future__ import annotations

import logging
import signal
import sys
from types import FrameType

from chaos.params import parse
from chaos.run import run


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM cleans up like Ctrl-C does: every process and the database go away."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    params = parse(argv)
    logging.basicConfig(
        level=logging.INFO if params.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    for noisy in ("werkzeug", "aiosmtpd", "mail.log"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return run(params)
    except KeyboardInterrupt:
        print("interrupted; everything the run started was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
