"""EchoMQ Dashboard: the Django project and app that show and act on queues."""
