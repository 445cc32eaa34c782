"""The webhook endpoints resource (the management API), and their deliveries' views."""
