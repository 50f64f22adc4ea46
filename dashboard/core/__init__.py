"""The plumbing every room stands on: the app's settings, the Redis clients,
URL segments to queues, who may do what, JSON in and out, the error answers.
"""
