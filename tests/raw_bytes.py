"""Where a text still sits in files, byte for byte: the check that forgotten text is gone.

It walks every file under a folder generically (whatever files om, or a later version,
keeps there), and looks for the text in each form om's files can hold it in: as written,
JSON-escaped once (a row's body) and twice (a tool result's text inside a row), and
lowercased (the search index's tokens).
"""

import json
import os


def needles(text):
    once = json.dumps(text, ensure_ascii=False)[1:-1]
    forms = {text, once, json.dumps(once, ensure_ascii=False)[1:-1], text.lower()}
    return {form.encode("utf-8") for form in forms}


def files_holding(root, text):
    """Every file under `root` whose raw bytes hold `text` in any of its forms."""
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                data = f.read()
            if any(n in data for n in needles(text)):
                found.append(path)
    return found
