"""Recognise the agent's own ledger calls among its shell commands.

Invariant: `is_ledger_call` returns True only when the whole command, parsed
without executing anything, consists of simple commands that are each a static
call of the exact advertised runtime or of `om`, scoped to this store and
session: `--store <this store>` and `--session <this session>` each given at
least once and never with another value, before or after the command word
(v1's CLI accepts both), and a command word. They may be joined by `;`, `&&`
or `||`, with at most heredoc and input redirections. Everything else (pipes,
output redirections, substitutions, variables, subshells, functions, loops,
conditionals, mixed commands, `--store=...` spellings, anything unparsable) is
evidence: when unsure, capture.

`ledger_words` is the same reading, giving the command word of each call (so
a transcript reader can tell a `pause` from a `prime`); `is_ledger_call` is
whether it gives any.
"""

_SEPARATORS = {";", "&&", "||"}
_INPUT_REDIRECTIONS = {"<", "<<", "<<-", "<<<"}
_SCOPE = ("--store", "--session")


def command_of(tool_input):
    """The shell command a Bash-like tool ran: `command`, else `cmd` (exec-style tools), else None."""
    if not isinstance(tool_input, dict):
        return None
    for key in ("command", "cmd"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
    return None


def is_ledger_call(command, advertised_argv, store, session):
    return ledger_words(command, advertised_argv, store, session) is not None


def ledger_words(command, advertised_argv, store, session):
    """The command words (`pending`, `apply`, `pause`...) of a command that is only ledger calls, else None."""
    if not isinstance(command, str) or store not in command:
        # Cheap exit before importing shlex: a call naming this store must spell it out.
        return None
    if "`" in command:
        return None
    text = _strip_heredocs(command)
    if text is None or "$" in text:
        return None
    words = _tokens(text.replace("\n", " ; "))
    if words is None:
        return None
    commands, current = [], []
    for word in words:
        if word in _SEPARATORS:
            commands.append(current)
            current = []
        else:
            current.append(word)
    commands.append(current)
    commands = [c for c in commands if c]
    verbs = [_static_call(c, advertised_argv, store, session) for c in commands]
    return verbs if verbs and None not in verbs else None


def _static_call(words, advertised_argv, store, session):
    """The command word of one simple command that is a static call of the ledger, else None."""
    args, i = [], 0
    while i < len(words):
        word = words[i]
        if word in _INPUT_REDIRECTIONS:
            if i + 1 >= len(words) or _is_operator(words[i + 1]):
                return None
            i += 2
            continue
        if _is_operator(word):
            return None
        args.append(word)
        i += 1
    scope = ["--store", store, "--session", session]
    runtime = list(advertised_argv)
    if runtime[-4:] == scope:
        runtime = runtime[:-4]  # the runtime itself; its scope is checked like om's
    for program in (runtime, ["om"]):
        if program and args[: len(program)] == program:
            return _scoped_verb(args[len(program):], store, session)
    return None


def _scoped_verb(args, store, session):
    """The command word when `args` (after the program) are one with this exact store and session, else None."""
    wanted = {"--store": store, "--session": session}
    seen, rest, i = set(), [], 0
    while i < len(args):
        word = args[i]
        if word in wanted:
            if i + 1 >= len(args) or args[i + 1] != wanted[word]:
                return None
            seen.add(word)
            i += 2
            continue
        if word.startswith(tuple(option + "=" for option in _SCOPE)):
            return None
        rest.append(word)
        i += 1
    return rest[0] if len(seen) == 2 and rest and not rest[0].startswith("-") else None


def _is_operator(word):
    return bool(word) and all(ch in "|&;<>()" for ch in word)


def _tokens(text):
    import shlex

    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def _strip_heredocs(command):
    """The command with heredoc bodies removed, or None when a body is not static or never ends."""
    lines = command.split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        for delimiter, quoted, strip_tabs in _heredoc_markers(line):
            while True:
                if i >= len(lines):
                    return None
                body = lines[i]
                i += 1
                if (body.lstrip("\t") if strip_tabs else body) == delimiter:
                    break
                if not quoted and ("$" in body or "`" in body or "\\" in body):
                    return None
    return "\n".join(out)


def _heredoc_markers(line):
    """(delimiter, quoted, strip_tabs) for each `<<WORD` on one line, in order."""
    markers, i = [], 0
    quote = None
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            i += 1
            continue
        if line.startswith("<<", i) and not line.startswith("<<<", i):
            i += 2
            strip_tabs = line.startswith("-", i)
            if strip_tabs:
                i += 1
            while i < len(line) and line[i] in " \t":
                i += 1
            word, quoted = "", False
            while i < len(line) and line[i] not in " \t;|&<>()":
                if line[i] in "'\"":
                    q = line[i]
                    end = line.find(q, i + 1)
                    if end < 0:
                        return markers + [("\0unterminated", True, False)]
                    word += line[i + 1:end]
                    quoted = True
                    i = end + 1
                elif line[i] == "\\":
                    quoted = True
                    word += line[i + 1:i + 2]
                    i += 2
                else:
                    word += line[i]
                    i += 1
            if not word:
                return markers + [("\0empty", True, False)]
            markers.append((word, quoted, strip_tabs))
            continue
        i += 1
    return markers
