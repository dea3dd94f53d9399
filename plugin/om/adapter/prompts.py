"""The user's in-chat switches and om's own continuation, recognised in a prompt.

Invariants:
- A prompt whose first non-blank characters are `[om:pause]` pauses capture
  before anything of it is stored; `[om:resume]` resumes capture and the rest of
  the prompt (after the prefix and following whitespace) is what gets captured.
- `is_continuation` is true only for om's own last continuation text, verbatim
  (surrounding whitespace aside) or wrapped by a client as
  `<hook_prompt hook_run_id="...">TEXT</hook_prompt>` with `&`, `<`, `>` escaped
  as XML entities. Anything else is the user's and is evidence.
"""

PAUSE_PREFIX = "[om:pause]"
RESUME_PREFIX = "[om:resume]"
_WRAP_OPEN = "<hook_prompt"
_WRAP_CLOSE = "</hook_prompt>"


def is_pause(prompt):
    return prompt.lstrip().startswith(PAUSE_PREFIX)


def resumed_text(prompt):
    """The prompt without its `[om:resume]` prefix, or None when it has none."""
    stripped = prompt.lstrip()
    if not stripped.startswith(RESUME_PREFIX):
        return None
    return stripped[len(RESUME_PREFIX):].lstrip()


def is_continuation(prompt, reason):
    if not reason or not prompt:
        return False
    text = prompt.strip()
    if text == reason.strip():
        return True
    if not (text.startswith(_WRAP_OPEN) and text.endswith(_WRAP_CLOSE)):
        return False
    head_end = text.find(">")
    if head_end < 0:
        return False
    head = text[len(_WRAP_OPEN):head_end]
    if head and not head.startswith((" ", "\t", "\n")):
        return False  # another tag, such as <hook_promptx>
    body = text[head_end + 1:-len(_WRAP_CLOSE)]
    body = body.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return body.strip() == reason.strip()
