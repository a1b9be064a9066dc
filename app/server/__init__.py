"""Serving the workflow with ``langgraph dev``: the graph, its auth and its checkpointer.

langgraph.json names ``graph.make_graph``, ``auth.auth`` and ``checkpointer.checkpointer``.
"""
