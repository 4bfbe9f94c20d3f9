"""The route a delivery takes through the house, recorded while it runs.

A leg is what one request or one job does with it: it starts where the webhook view or an RQ job
(`automation.jobs`) is called. A station is a module of `automation` that a call lands in; the
tools every station may use take a value and give one back (`automation.platform`, the models,
the senders' shared body reading and field parsers, template tags) and are no stations; nor is
building a value (an `__init__`, written or generated) or code run at import: a station is
where work is done with the delivery. Within a leg the route is
a tree: a station's children are the stations it hands the work to, a station that calls one
module ten times has one child, and a module standing at two places of the tree was returned to
after the delivery had left it.
"""

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

LEG_STARTS = ("automation.intake.views", "automation.jobs")
TOOLS = (
    "automation.platform",
    "automation.models",
    "automation.templatetags",
    "automation.intake.sources.fields",
)
TOOL_MODULES = {"automation.intake.sources"}  # the package itself: Incoming, load_body, header


@dataclass
class Stay:
    module: str
    children: dict[str, "Stay"] = field(default_factory=dict)

    def lines(self, depth: int = 0) -> list[str]:
        own = [f"{'  ' * depth}{self.module}"]
        return own + [line for child in self.children.values() for line in child.lines(depth + 1)]

    def modules(self) -> list[str]:
        return [self.module] + [m for child in self.children.values() for m in child.modules()]

    def returns(self) -> set[str]:
        """The modules that stand at two places of this leg."""
        return {module for module, count in Counter(self.modules()).items() if count > 1}


def _station(frame) -> str:
    code = frame.f_code
    if code.co_name in ("<module>", "__init__") or code.co_filename.startswith("<"):
        return ""
    module = frame.f_globals.get("__name__", "")
    if not module.startswith("automation.") or module.startswith(TOOLS) or module in TOOL_MODULES:
        return ""
    return module


@contextmanager
def route() -> Iterator[list[Stay]]:
    """The legs run while the block runs, in order."""
    legs: list[Stay] = []
    stays: dict[int, Stay] = {}

    def profile(frame, event, arg) -> None:
        if event == "return":
            stays.pop(id(frame), None)
            return
        if event != "call":
            return
        module = _station(frame)
        if not module:
            return
        caller = frame.f_back
        while caller is not None and id(caller) not in stays:
            caller = caller.f_back
        if caller is None:
            if module in LEG_STARTS:
                legs.append(Stay(module))
                stays[id(frame)] = legs[-1]
            return
        parent = stays[id(caller)]
        if parent.module == module:
            stays[id(frame)] = parent
        else:
            stays[id(frame)] = parent.children.setdefault(module, Stay(module))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield legs
    finally:
        sys.setprofile(previous)
