"""Reporting a run to people: Allure results, the Allure HTML report, the timeline chart."""
