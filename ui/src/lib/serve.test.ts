import { describe, expect, it } from "vitest";
import type { ServeStatus } from "../ipc";
import { type ServeForm, connectorUrl, formOf, listEntries, rateText, settingsOf } from "./serve";

describe("listEntries", () => {
  it("splits on lines and commas, trims, drops blanks and repeats", () => {
    expect(listEntries(" a.example \n\nb.example, a.example ,\n")).toEqual(["a.example", "b.example"]);
    expect(listEntries("")).toEqual([]);
  });
});

describe("rateText", () => {
  it("shows a decimal under 10 per second and whole numbers above", () => {
    expect(rateText(0)).toBe("0/s");
    expect(rateText(-1)).toBe("0/s");
    expect(rateText(Number.NaN)).toBe("0/s");
    expect(rateText(2.25)).toBe("2.3/s");
    expect(rateText(123.6)).toBe("124/s");
  });
});

describe("settingsOf and formOf", () => {
  const form: ServeForm = {
    listen: " 127.0.0.1:8808 ",
    hosts: "a.example\n a.example, b.example",
    origins: "",
    publicUrl: " https://mcp.example.org ",
    tlsCert: " /etc/gh/cert.pem",
    tlsKey: "/etc/gh/key.pem ",
    proxies: "10.0.0.1\n\n10.0.0.2",
    requireKey: true,
  };

  it("sends every field as text, trimmed, lists split, for Rust to check", () => {
    expect(settingsOf(form)).toEqual({
      listen: "127.0.0.1:8808",
      hosts: ["a.example", "b.example"],
      origins: [],
      public_url: "https://mcp.example.org",
      tls_cert: "/etc/gh/cert.pem",
      tls_key: "/etc/gh/key.pem",
      behind_proxy: ["10.0.0.1", "10.0.0.2"],
      require_key: true,
    });
  });

  it("does not judge a URL itself: a bad one reaches Rust as typed", () => {
    expect(settingsOf({ ...form, publicUrl: "http://mcp.example.org" }).public_url).toBe("http://mcp.example.org");
  });

  it("fills the form back from a running server's or the saved settings", () => {
    const settings = settingsOf(form);
    expect(settingsOf(formOf(settings))).toEqual(settings);
    const off = settingsOf({ ...form, requireKey: false });
    expect(formOf(off).requireKey).toBe(false);
  });
});

describe("connectorUrl", () => {
  const status = (running: boolean, oauth_issuer?: string): ServeStatus =>
    ({ running, url: "http://127.0.0.1:8808/mcp", ...(oauth_issuer ? { oauth_issuer } : {}) }) as ServeStatus;

  it("is the served /mcp URL only while a server runs with OAuth on", () => {
    expect(connectorUrl(status(true, "http://127.0.0.1:8808"))).toBe("http://127.0.0.1:8808/mcp");
    expect(connectorUrl(status(true))).toBeNull();
    expect(connectorUrl(status(false, "http://127.0.0.1:8808"))).toBeNull();
    expect(connectorUrl(null)).toBeNull();
  });
});
