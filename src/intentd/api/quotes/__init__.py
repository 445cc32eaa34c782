"""The quotes resource."""
