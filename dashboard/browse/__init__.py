"""The queues browsed: the overview, a queue's tabs, a job, the events; their
pages and their JSON API.
"""
