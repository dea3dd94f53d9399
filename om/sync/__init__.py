"""`om sync`: memory that travels between machines over git, one ref per writer, never a merge.

The data path, one module each:
- om.sync.layout: where sync keeps its files in a store (`<store>/sync/`).
- om.sync.config: the writer's identity and remotes (config.json) and what
  each remote has seen (state.json); durations.
- om.sync.repo: om's own bare repository (`sync/repo.git`), run through
  om.project.git with a deadline; the only git repository om writes.
- om.sync.projection: a ledger's rows as canonical JSON-lines bytes, and
  those bytes read back (checked: remote content is never trusted).
- om.sync.outbox: which sessions a remote shares, each one's projection.
- om.sync.publish: the outbox as one commit, made by one `git fast-import`.
- om.sync.transport: fetch and push to a git URL; bundles in a folder.
- om.sync.tombstones: forgetting in another writer's records; its rule.
- om.sync.mirrors: fetched session files as read-only v1 ledgers (their SQL is
  om.ledger.mirror's).
- om.sync.readers: the mirrors where memory is read (sessions, search, the
  project memory, export, import --from-mirror).
- om.sync.status: what `om sync status` and the MCP tool `sync_status` say.
- om.sync.verbs: `om sync init`, `om sync`, `om sync forget-writer`.

Invariants: nothing here runs on the hook path (no hook imports om.sync); the
live ledgers never travel, only their projection; each store publishes only
its own ref, `refs/om/v1/w/<writer>`; the user's project repository is only
ever read (`git ls-remote --get-url`).
"""
