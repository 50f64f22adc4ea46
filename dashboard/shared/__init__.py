"""What the rooms share above the plumbing: the web helpers every view uses,
the presenters and charts, and the actions (every change, audited).
"""
