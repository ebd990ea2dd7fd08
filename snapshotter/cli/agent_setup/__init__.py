"""``snapshotter init``: wiring the hooks into an agent's configuration, idempotently.

Pasting JSON by hand was the first thing new users got wrong. The merge keeps
every hook that is already there, adds ours only where it is missing (so a
second run changes nothing) and keeps a backup of any file it changes. One
module a job: our hook's entry (``hook_entry``), changing a config file
(``config_files``), the runtimes configured in JSON (``json_config``),
docker-agent's YAML (``docker_agent``) and Codex's trust (``codex_trust``).
"""
