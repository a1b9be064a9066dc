"""Fault injection for crash and retry tests, behind one seam: a run's services.

``rules`` parses ``HANDOFF_FAULT``; ``points`` wraps the services a run calls so each call
names its point. With ``HANDOFF_FAULT`` unset a run's services are the plain ones.
"""
