//! The menu bar, as each system's convention has it.
//!
//! macOS: every app has a menu bar, and a webview's copy, paste and undo shortcuts
//! (⌘C, ⌘V, ⌘Z) work only through an Edit menu that holds those items; ⌘Q, ⌘H and
//! ⌘M come from the app and Window menus. So the app menu (About, Services, Hide,
//! Hide Others, Show All, Quit), Edit and Window. Windows and Linux: no menu bar;
//! the page has its own navigation and the webview handles the editing shortcuts
//! and its context menu itself, as single-window apps on those systems do.
//!
//! [`layout`] is the table per system (a pure function, tested on every system);
//! [`install`] builds it with Tauri's menu API. Quit is our own item, not the
//! predefined one: it goes through `AppHandle::exit`, so the run loop's `Exit`
//! event closes the open site (its audit checkpoint) as closing the window does.

use tauri::menu::{AboutMetadata, IsMenuItem, Menu, MenuItem, PredefinedMenuItem as P, Submenu};
use tauri::{AppHandle, Runtime};

/// Whose convention the menu bar follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    MacOs,
    /// Windows and Linux: no menu bar.
    Other,
}

/// The system this build runs on.
pub const SYSTEM: System = if cfg!(target_os = "macos") {
    System::MacOs
} else {
    System::Other
};

/// One entry of a menu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    About,
    Services,
    Hide,
    HideOthers,
    ShowAll,
    /// Ours (id [`QUIT`], ⌘Q): quits through the app's exit path.
    Quit,
    Undo,
    Redo,
    Cut,
    Copy,
    Paste,
    SelectAll,
    Minimize,
    Zoom,
    CloseWindow,
    BringAllToFront,
    Separator,
}

/// A menu of the bar: its title and entries.
#[derive(Debug, PartialEq, Eq)]
pub struct MenuSpec {
    pub title: &'static str,
    pub items: &'static [Item],
}

/// The id of our Quit item.
pub const QUIT: &str = "gatehouse.quit";

const MACOS: &[MenuSpec] = {
    use Item::*;
    &[
        // The first menu is the app menu; macOS titles it with the app's name.
        MenuSpec {
            title: "Gatehouse",
            items: &[
                About, Separator, Services, Separator, Hide, HideOthers, ShowAll, Separator, Quit,
            ],
        },
        MenuSpec {
            title: "Edit",
            items: &[Undo, Redo, Separator, Cut, Copy, Paste, SelectAll],
        },
        MenuSpec {
            title: "Window",
            items: &[Minimize, Zoom, Separator, CloseWindow, BringAllToFront],
        },
    ]
};

/// The menu bar of `system`: its menus in order, none for no bar.
pub fn layout(system: System) -> &'static [MenuSpec] {
    match system {
        System::MacOs => MACOS,
        System::Other => &[],
    }
}

/// Sets this system's menu bar on the app (none on Windows and Linux) and
/// handles our Quit item.
pub fn install<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let Some(menu) = build(app, SYSTEM)? else {
        return Ok(());
    };
    app.set_menu(menu)?;
    app.on_menu_event(|app, event| {
        if event.id() == QUIT {
            app.exit(0);
        }
    });
    Ok(())
}

/// `system`'s menu bar built with Tauri's menu API, `None` when it has none.
pub fn build<R: Runtime>(app: &AppHandle<R>, system: System) -> tauri::Result<Option<Menu<R>>> {
    let menus = layout(system);
    if menus.is_empty() {
        return Ok(None);
    }
    let bar = Menu::new(app)?;
    for spec in menus {
        let submenu = Submenu::new(app, spec.title, true)?;
        for &item in spec.items {
            submenu.append(entry(app, item)?.as_ref())?;
        }
        bar.append(&submenu)?;
    }
    Ok(Some(bar))
}

fn entry<R: Runtime>(app: &AppHandle<R>, item: Item) -> tauri::Result<Box<dyn IsMenuItem<R>>> {
    Ok(match item {
        Item::About => {
            let info = app.package_info();
            let about = AboutMetadata {
                name: Some("Gatehouse".into()),
                version: Some(info.version.to_string()),
                ..Default::default()
            };
            Box::new(P::about(app, Some("About Gatehouse"), Some(about))?)
        }
        Item::Services => Box::new(P::services(app, None)?),
        Item::Hide => Box::new(P::hide(app, Some("Hide Gatehouse"))?),
        Item::HideOthers => Box::new(P::hide_others(app, None)?),
        Item::ShowAll => Box::new(P::show_all(app, None)?),
        Item::Quit => Box::new(MenuItem::with_id(
            app,
            QUIT,
            "Quit Gatehouse",
            true,
            Some("CmdOrCtrl+Q"),
        )?),
        Item::Undo => Box::new(P::undo(app, None)?),
        Item::Redo => Box::new(P::redo(app, None)?),
        Item::Cut => Box::new(P::cut(app, None)?),
        Item::Copy => Box::new(P::copy(app, None)?),
        Item::Paste => Box::new(P::paste(app, None)?),
        Item::SelectAll => Box::new(P::select_all(app, None)?),
        Item::Minimize => Box::new(P::minimize(app, None)?),
        Item::Zoom => Box::new(P::maximize(app, Some("Zoom"))?),
        Item::CloseWindow => Box::new(P::close_window(app, None)?),
        Item::BringAllToFront => Box::new(P::bring_all_to_front(app, None)?),
        Item::Separator => Box::new(P::separator(app)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(system: System, title: &str) -> &'static [Item] {
        layout(system)
            .iter()
            .find(|m| m.title == title)
            .map(|m| m.items)
            .unwrap_or(&[])
    }

    #[test]
    fn macos_has_the_app_menu_first_with_about_hide_and_quit() {
        let first = &layout(System::MacOs)[0];
        assert_eq!(first.title, "Gatehouse");
        assert_eq!(first.items.first(), Some(&Item::About));
        assert_eq!(first.items.last(), Some(&Item::Quit));
        for want in [Item::Services, Item::Hide, Item::HideOthers, Item::ShowAll] {
            assert!(first.items.contains(&want), "the app menu lacks {want:?}");
        }
    }

    #[test]
    fn macos_edit_menu_carries_the_webviews_editing_shortcuts() {
        let edit = items(System::MacOs, "Edit");
        for want in [
            Item::Undo,
            Item::Redo,
            Item::Cut,
            Item::Copy,
            Item::Paste,
            Item::SelectAll,
        ] {
            assert!(edit.contains(&want), "Edit lacks {want:?}");
        }
    }

    #[test]
    fn every_item_appears_once_and_no_menu_starts_or_ends_with_a_separator() {
        let mut seen = Vec::new();
        for menu in layout(System::MacOs) {
            assert_ne!(menu.items.first(), Some(&Item::Separator), "{}", menu.title);
            assert_ne!(menu.items.last(), Some(&Item::Separator), "{}", menu.title);
            for w in menu.items.windows(2) {
                assert!(w != [Item::Separator, Item::Separator], "{}", menu.title);
            }
            for &item in menu.items.iter().filter(|&&i| i != Item::Separator) {
                assert!(!seen.contains(&item), "{item:?} twice");
                seen.push(item);
            }
        }
    }

    #[test]
    fn windows_and_linux_have_no_menu_bar() {
        assert!(layout(System::Other).is_empty());
        if !cfg!(target_os = "macos") {
            assert_eq!(SYSTEM, System::Other);
        }
    }
}
