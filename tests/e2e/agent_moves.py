"""What the scripted models of the end-to-end tests read from a turn and write back, for either client.

Invariant: pure functions of tool output text; nothing here knows which client ran the tool.
"""

import json


def json_in(tool_output):
    """The JSON document a tool printed (after whatever header lines the client adds)."""
    start = tool_output.index("{")
    return json.JSONDecoder().raw_decode(tool_output[start:])[0]


def marker_checkpoint(pending, observation, marker="marker"):
    """A checkpoint through `pending`, one high-importance observation citing the tool sources naming `marker`."""
    cited = [s["id"] for s in pending["sources"] if s["kind"] == "tool" and marker in s["text"]]
    return {"through": pending["through"],
            "observations": [{"text": observation, "importance": "high", "source_ids": cited}]}


def promoting_checkpoint(pending, observation, marker="marker"):
    """marker_checkpoint whose observation also moves into the project memory (`"promote": true`)."""
    checkpoint = marker_checkpoint(pending, observation, marker)
    for entry in checkpoint["observations"]:
        entry["promote"] = True
    return checkpoint


def project_entry_ids(prime_output):
    """Ids of the entries the project memory block of a `prime` lists, in its order."""
    ids, inside = [], False
    for line in prime_output.splitlines():
        if line.startswith("# om project memory"):
            inside = True
        elif inside and line.startswith("- "):
            ids.append(line.split()[1])
        elif inside and not line.startswith("#"):
            inside = False
    return ids
