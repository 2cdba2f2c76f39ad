"""The worker's log lines: job ids and counts at INFO, never the thousands of
fact ids an embed or cleanup job carries. Procrastinate logs each job's call
with its arguments ("Starting job vera.embed[42](group_id=..., fact_ids=[...])");
a list of more than a few items in any line is shortened to its count."""

from __future__ import annotations

import logging
import re

# a bracketed list of more than MAX_ITEMS comma-separated items (no item holds a comma or a
# bracket, so each match is found in one pass, whatever the line's length)
MAX_ITEMS = 5
_LONG_LIST = re.compile(r"\[(?:[^\[\],\n]*,){%d,}[^\[\],\n]*\]" % MAX_ITEMS)  # noqa: UP031 (a regex)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def shorten_lists(message: str) -> str:
    """message with every long list replaced by "[N items]"."""
    return _LONG_LIST.sub(lambda match: f"[{match.group(0).count(',') + 1} items]", message)


class ShortLists(logging.Filter):
    """A handler filter that shortens long lists in every record it emits."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        shortened = shorten_lists(message)
        if shortened != message:
            record.msg, record.args = shortened, None
        return True


def configure_worker_logging(level: int = logging.INFO) -> None:
    """Log lines to stderr at level, with long lists shortened."""
    logging.basicConfig(level=level, format=LOG_FORMAT)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, ShortLists) for f in handler.filters):
            handler.addFilter(ShortLists())
