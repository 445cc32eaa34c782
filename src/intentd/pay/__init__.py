"""The payment modal and the hosted checkout page, served by the API under ``/pay``.

The browser code is in ``static/`` (plain ES modules, no build step); ``routes``
serves it with a strict Content-Security-Policy. See docs/payment-modal.md.
"""
