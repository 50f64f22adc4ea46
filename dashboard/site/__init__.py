"""What the stand-alone site adds around the app: the ASGI HTTP handler, the
login pages, the log filter, the static files storage.
"""
