/** The text and accessible name of a button in one of its two steps. */
export interface Face {
  text: string;
  label: string;
}

/**
 * Makes `button` two-step, for an action that is immediate and final: the
 * first click only arms it (showing `armed`), the second calls `onConfirm`.
 * Escape or leaving the button disarms it, so a stray second click later
 * does nothing. `onArm` runs when it arms (e.g. to clear an old error).
 */
export function twoStep(
  button: HTMLButtonElement,
  idle: Face,
  armed: Face,
  onConfirm: () => void,
  onArm?: () => void,
): { disarm: () => void } {
  const show = (face: Face) => {
    button.textContent = face.text;
    button.setAttribute("aria-label", face.label);
  };
  const disarm = () => {
    delete button.dataset.armed;
    show(idle);
  };
  show(idle);
  button.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && button.dataset.armed === "true") {
      event.preventDefault();
      disarm();
    }
  });
  button.addEventListener("blur", () => {
    // A busy (disabled) button loses focus while it works: that is no cancel.
    if (!button.disabled) disarm();
  });
  button.addEventListener("click", () => {
    if (button.dataset.armed !== "true") {
      button.dataset.armed = "true";
      show(armed);
      onArm?.();
      return;
    }
    onConfirm();
  });
  return { disarm };
}
