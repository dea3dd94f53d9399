"""Each fast-path shortcut in om.fastpath gives exactly what its public fallback gives.

(jsonio's scanner and encoder have their own differential test, test_jsonio_matches_json.)
"""

import hashlib
import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from om import fastpath


@settings(max_examples=500, deadline=None)
@given(st.text() | st.text(alphabet="ab '\"$`\\!*?~#&;|<>(){}[]=%+:,./-_@\n\t", max_size=12))
def test_shell_quoting_is_character_for_character_shlex_quote(word):
    assert fastpath.shell_quote(word) == shlex.quote(word)
    assert shlex.split(fastpath.shell_quote(word)) == [word]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_the_c_sha256_is_hashlibs(data):
    assert fastpath.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
