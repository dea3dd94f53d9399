"""A small, realistic session ledger for the export tests and the docs screenshot.

Built through the CLI's entry point, in process (the export tests assert on their own
`om export` subprocesses; this only arranges the ledger): captures, checkpoints with every importance, a
reflection, a retirement with a replacement, a truncated source, and stored
text that tries to become markup or break Markdown fences.
"""

import json

from inprocess import setup_om

HOSTILE = (
    'Tried `make ship`: </pre></script><script>window.__pwned = 1</script>'
    '<img src=x onerror="window.__pwned = 2"> & "quotes" \'too\'\u2028next line\u2029para'
    "\n```\n# not a heading\n````` five ticks"
)

SOURCES = [
    ("user", "Deploys to staging keep failing since Monday; can you find out why? We ship with `make ship`."),
    ("tool", "$ make ship\nBuilding image om-api:2f9c1e...\nERROR: health check /healthz timed out after 30s\n"
             "make: *** [ship] Error 1"),
    ("tool", "$ kubectl logs deploy/om-api --tail=20\nlistening on :8080\nconnecting to postgres at "
             "atlas.internal:5432\nFATAL: password authentication failed for user \"api\""),
    ("assistant", "The health check fails because the API cannot reach Postgres: the staging secret still "
                  "holds last week's rotated password."),
    ("user", "Right, Dana rotated it on Monday. Please never print secrets in logs again."),
    ("tool", "$ kubectl apply -f k8s/staging/secret.yaml\nsecret/om-api-db configured\n$ make ship\n"
             "health check /healthz ok in 2.1s\ndeployed om-api:2f9c1e to staging"),
    ("tool", HOSTILE),
    ("tool", "LONG BUILD LOG\n" + "step ok\n" * 4000),
]


def om(store, *args, input=None, session="s1"):
    return setup_om("--store", store, "--session", session, *args, input=input)


def build(store, session="s1"):
    """Fill `session` in `store`; return the ids by role."""
    sids = []
    for i, (kind, text) in enumerate(SOURCES):
        payload = json.dumps({"kind": kind, "text": text, "key": f"k{i}"})
        sids.append(om(store, "capture", input=payload, session=session).json["source_id"])
    through = om(store, "pending", session=session).json["through"]
    first = {
        "through": through,
        "observations": [
            {"text": "Staging deploys fail at the /healthz check: `make ship` times out after 30s.",
             "importance": "high", "source_ids": [sids[0], sids[1]]},
            {"text": "The staging API cannot log in to Postgres on atlas.internal:5432.",
             "importance": "medium", "source_ids": [sids[2]]},
            {"text": "The user wants secrets never printed in logs.", "importance": "critical",
             "source_ids": [sids[4]]},
            {"text": HOSTILE, "importance": "low", "source_ids": [sids[6], sids[7]]},
        ],
    }
    o = om(store, "apply", input=json.dumps(first), session=session).json["observations"]
    second = {
        "through": through,
        "observations": [
            {"text": "Cause found: the staging DB secret held the password Dana rotated on Monday; after "
                     "`kubectl apply -f k8s/staging/secret.yaml` the deploy passes.",
             "importance": "high", "source_ids": [sids[3], sids[4], sids[5]]},
        ],
    }
    fixed = om(store, "apply", input=json.dumps(second), session=session).json["observations"][0]
    third = {
        "through": through,
        "reflections": [
            {"text": "When a staging deploy fails its health check, check the DB secret first: passwords "
                     "rotate and the secret is updated by hand.", "observation_ids": [o[1], fixed]},
        ],
        "retire": [{"id": o[0], "reason": "Superseded: the timeout was a symptom; the cause is the stale "
                                         "secret. " + HOSTILE, "replacement_ids": [fixed]}],
    }
    r = om(store, "apply", input=json.dumps(third), session=session).json["reflections"][0]
    return {"sources": sids, "symptom": o[0], "db": o[1], "secrets": o[2], "hostile": o[3], "fixed": fixed,
            "reflection": r}
