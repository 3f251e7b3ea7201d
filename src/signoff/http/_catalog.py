"""The tools a server guards: the demo's, or the ``SIGNOFF_CATALOG`` reference.

Kept apart from ``_app`` so the commands that only need the catalog (``signoff
tools``, ``serve``'s start-up checks) do not import FastAPI or the MCP SDK.
"""

from __future__ import annotations

from dataclasses import dataclass

from signoff._paths import demo_shop_file
from signoff._references import build_from_reference
from signoff.catalog._catalog import Catalog
from signoff.demo import DemoShop, RefundProvider, seed_demo_orders
from signoff.exceptions import CatalogImportError
from signoff.http._settings import Settings, SettingsError


@dataclass(frozen=True, slots=True)
class DemoObjects:
    """The demo shop and its provider, so clients can see the external side effect."""

    shop: DemoShop
    provider: RefundProvider


def demo_shop_path(database_url: str) -> str:
    """The demo shop lives next to a SQLite database, or in the data directory."""
    return demo_shop_file(database_url)


def open_demo(settings: Settings) -> DemoObjects:
    shop = DemoShop(demo_shop_path(settings.database_url))
    seed_demo_orders(shop)
    return DemoObjects(shop=shop, provider=RefundProvider(shop))


def native_catalog(settings: Settings) -> Catalog:
    """The configured tools; none when only upstream MCP servers are served."""
    if settings.catalog is None and settings.upstreams:
        return Catalog()
    return load_catalog(settings)


def load_catalog(settings: Settings) -> Catalog:
    """``SIGNOFF_CATALOG``: a Catalog, or a no-argument factory returning one."""
    if settings.catalog is None:
        raise SettingsError("SIGNOFF_CATALOG (module:factory) is required outside --demo")
    catalog: Catalog = build_from_reference(
        settings.catalog, "SIGNOFF_CATALOG", Catalog, "a signoff.Catalog", broken=CatalogImportError
    )
    return catalog
