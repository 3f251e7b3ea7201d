// Passkey ceremonies of the confirmation page, from this same-origin file (CSP: no inline
// script, no fetch). The page carries the server's options in a data attribute; this script
// asks the authenticator and posts its answer with the form. The server checks everything.
// For a proposal that moves money (data-payment), the approval is a Secure Payment
// Confirmation where the browser offers it: the browser's own dialog shows the payee and the
// amount, and the signed client data carries them. WebAuthn is the fallback.
(function () {
  "use strict";

  let spcAvailable = null;

  // Feature detection: PaymentRequest with SPC, and the browser saying it is available.
  async function spc() {
    if (spcAvailable === null) {
      spcAvailable = false;
      try {
        if (window.PaymentRequest && typeof PaymentRequest.securePaymentConfirmationAvailability === "function") {
          spcAvailable = (await PaymentRequest.securePaymentConfirmationAvailability()) === "available";
        }
      } catch (error) {
        spcAvailable = false;
      }
    }
    return spcAvailable;
  }

  function toBuffer(text) {
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    const padded = base64 + "===".slice((base64.length + 3) % 4);
    const binary = atob(padded);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
    return bytes.buffer;
  }

  function toText(buffer) {
    let binary = "";
    for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function descriptors(list) {
    return (list || []).map(function (item) { return Object.assign({}, item, { id: toBuffer(item.id) }); });
  }

  function status(form, message) {
    const place = form.querySelector("[data-passkey-status], [data-device-status]");
    if (place) place.textContent = message;
  }

  async function enrol(form) {
    const options = JSON.parse(form.dataset.registrationOptions);
    options.challenge = toBuffer(options.challenge);
    options.user.id = toBuffer(options.user.id);
    options.excludeCredentials = descriptors(options.excludeCredentials);
    // A passkey that may also confirm payments (SPC needs the payment extension).
    if (await spc()) options.extensions = Object.assign({}, options.extensions, { payment: { isPayment: true } });
    const credential = await navigator.credentials.create({ publicKey: options });
    form.elements.credential.value = JSON.stringify({
      id: credential.id,
      rawId: toText(credential.rawId),
      type: credential.type,
      response: {
        clientDataJSON: toText(credential.response.clientDataJSON),
        attestationObject: toText(credential.response.attestationObject),
        transports: credential.response.getTransports ? credential.response.getTransports() : [],
      },
      clientExtensionResults: {},
    });
  }

  async function confirmPayment(options, payment) {
    const request = new PaymentRequest(
      [{
        supportedMethods: "secure-payment-confirmation",
        data: {
          credentialIds: options.allowCredentials.map(function (item) { return item.id; }),
          challenge: options.challenge,
          rpId: payment.rpId,
          payeeName: payment.payeeName,
          instrument: payment.instrument,
          timeout: options.timeout || 300000,
        },
      }],
      { total: { label: "Total", amount: payment.total } }
    );
    const response = await request.show();
    await response.complete("success");
    return response.details;
  }

  async function sign(form) {
    const options = JSON.parse(form.dataset.deviceOptions);
    options.challenge = toBuffer(options.challenge);
    options.allowCredentials = descriptors(options.allowCredentials);
    let credential = null;
    if (form.dataset.payment && (await spc())) {
      try {
        credential = await confirmPayment(options, JSON.parse(form.dataset.payment));
      } catch (error) {
        credential = null; // e.g. a passkey enrolled without the payment extension
      }
    }
    if (credential === null) credential = await navigator.credentials.get({ publicKey: options });
    form.elements.device_assertion.value = JSON.stringify({
      id: credential.id,
      rawId: toText(credential.rawId),
      type: credential.type,
      response: {
        authenticatorData: toText(credential.response.authenticatorData),
        clientDataJSON: toText(credential.response.clientDataJSON),
        signature: toText(credential.response.signature),
        userHandle: credential.response.userHandle ? toText(credential.response.userHandle) : null,
      },
      clientExtensionResults: {},
    });
  }

  function ceremony(form, run) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      status(form, "Waiting for your passkey…");
      run(form).then(
        function () { form.submit(); },
        function (error) { status(form, "The passkey did not answer (" + error.name + "). Nothing was sent."); }
      );
    });
  }

  document.querySelectorAll("form[data-registration-options]").forEach(function (form) { ceremony(form, enrol); });
  document.querySelectorAll("form[data-device-options]").forEach(function (form) { ceremony(form, sign); });
})();
