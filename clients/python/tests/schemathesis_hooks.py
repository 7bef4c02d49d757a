"""schemathesis hooks for run_schemathesis.py (loaded through ``SCHEMATHESIS_HOOKS``).

OpenAPI has no keyword for a rule between two parameters. One operation of ours has such a rule:
`end` not before `start` (a 400 otherwise), which the document states in words, in the `end`
parameter's description. schemathesis draws `start` and `end` independently, so a positive case may
break that rule and would then be reported as valid data refused. This hook keeps generated
positive cases within it, on exactly the operations whose document states it, by swapping the two
dates; negative cases and every check are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

import schemathesis
from schemathesis import Case, GenerationMode, HookContext

DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
#: How the document states the rule on `end` (queries/*/…controller.ts, `@param end`).
RULE = "not before `start`"


def states_date_order(context: HookContext) -> bool:
    """Whether the operation's `end` query parameter carries the documented rule."""
    operation = context.operation
    if operation is None:
        return False
    return any(p.name == "end" and RULE in str(p.definition.get("description", "")) for p in operation.query)


@schemathesis.hook
def map_case(context: HookContext, case: Case[Any]) -> Case[Any]:
    query: Any = case.query
    positive = case.meta is not None and case.meta.generation.mode is GenerationMode.POSITIVE
    if not positive or not isinstance(query, dict) or not states_date_order(context):
        return case
    start, end = query.get("start"), query.get("end")
    if isinstance(start, str) and isinstance(end, str) and DATE.match(start) and DATE.match(end) and start > end:
        query["start"], query["end"] = end, start
    return case
