"""A way in: the workflow served as an A2A 1.0 agent (``handoff a2a``), over a2a-sdk.

A2A task = thread: the task id is the thread id, the context id is the task spec's
``task_id`` (every version of one task shares it), and every task read is derived from
the thread's checkpoints, so nothing here can drift from what ``handoff status`` says.
Nothing is imported from a2a-sdk until the server is built: it is the optional ``a2a``
extra.
"""
