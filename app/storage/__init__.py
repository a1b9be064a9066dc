"""Where everything a run keeps lives: checkpoints, artifacts, the audit ledger, thread locks.

``backends`` opens the checkpoint saver, ledger and lock for one database URL (SQLite, the
embedded default, or PostgreSQL); ``artifacts`` holds the content stores; the rest are the
pieces they share (connections, files, the serializer) and fast reads of a thread.
"""
