"""Who is calling: API keys and session tokens checked per request, the caller's
source address, and the rate limits."""
