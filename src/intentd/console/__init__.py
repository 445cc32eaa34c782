"""The merchant console: pages under ``/console`` served by the API process (same
origin, a session cookie, no API key in the browser), and the JSON they read under
``/console/api`` (docs/console.md).

``mount`` adds it to the API's app; ``auth`` reads a request's session and checks
its role's permission and CSRF token; ``routes_*`` are the pages' operations;
``waiting`` tells why a payment waits (pure); ``static/`` holds the browser code
(plain ES modules, no build step), served with a strict Content-Security-Policy.
"""
